import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

export class Partner extends Model<InferAttributes<Partner>, InferCreationAttributes<Partner>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare name: string;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    Partner.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        name: { type: DataTypes.TEXT, allowNull: false },
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'partners', underscored: true, updatedAt: false },
    );
  }
}
